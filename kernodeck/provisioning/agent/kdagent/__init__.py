"""Kernodeck host agent: the machine work of a rental on one GPU host.

The control plane builds this package into one zipapp file (`kernodeck_agent.pyz`, see
`kernodeck.provisioning.agent.zipapp_bytes`), copies it to a node, checked by SHA-256, and
runs it as root over SSH (`python3 kernodeck_agent.pyz SUBCOMMAND < request.json`). It
needs only the standard library of the host's Python 3.9+. Every subcommand reads one JSON
object on standard input and prints one JSON object: `{"ok": true, ...}`, or
`{"ok": false, "error": ...}` with exit status 1. Every step is idempotent: running it again
converges on the same state (one account, one key set, one preparation token) instead of
repeating it.

Settings come, in increasing priority, from built-in defaults, `agent.json` next to the
archive, and command-line flags. `--root` is the folder that holds `dev/` (and `sys/` for
AMD render-node discovery), so tests can give the agent stand-in device files.

The agent only ever touches accounts it created itself: each has a state file under
`state_dir/rentals/`, and an existing account without one is refused.

Modules: `commands` (the table of subcommands), `cli` (request in, answer out), `state`,
`parsers` and `inventory`, `accounts`, `devices`, `services` (preparations), `ending`.
"""

AGENT_VERSION = "1"
