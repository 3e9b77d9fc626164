"""The `kernodeck` command: Django's manage.py for this project."""

import os
import sys

from kernodeck.demo.profile import apply_demo_environment

DEMO_ON = {"1", "true", "yes", "on"}


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    # `kernodeck demo` and every command run with KERNODECK_DEMO on read the demo's own
    # configuration (its key and database under var/), so `KERNODECK_DEMO=1 kernodeck
    # watch_chains --once` acts on the running demo instead of failing or leaving demo mode.
    demo_requested = os.environ.get("KERNODECK_DEMO", "").strip().lower() in DEMO_ON
    starting_demo = sys.argv[1:2] == ["demo"]
    if starting_demo or demo_requested:
        # `kernodeck demo` starts its own chain simulator; other commands use the running one.
        apply_demo_environment(chain_simulator=not starting_demo)

    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:
        # A configuration error is the operator's to fix: say it plainly, no traceback.
        sys.stderr.write(f"kernodeck: configuration error: {exc}\n")
        sys.exit(2)


if __name__ == "__main__":
    main()
