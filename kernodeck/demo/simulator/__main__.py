"""python -m kernodeck.demo.simulator: the chain simulator's process (see server.main)."""

from kernodeck.demo.simulator.server import main

if __name__ == "__main__":
    main()
