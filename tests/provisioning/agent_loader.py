"""The host agent as a node runs it: the zipapp the ssh driver ships, outside Django.

`AGENT_PATH` is that archive, built once per test process into a root-only folder;
`load_agent()` gives the package's parsers for tests that call them directly.
"""

import atexit
import importlib
import shutil
import tempfile
from pathlib import Path

from kernodeck.provisioning.agent import ARCHIVE_NAME, write_zipapp

_folder = Path(tempfile.mkdtemp(prefix="kdagent-pyz-"))
atexit.register(shutil.rmtree, _folder, True)
AGENT_PATH = write_zipapp(_folder / ARCHIVE_NAME)


def load_agent():
    return importlib.import_module("kernodeck.provisioning.agent.kdagent.parsers")
