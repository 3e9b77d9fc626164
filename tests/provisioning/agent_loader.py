"""Loads the host agent the way a node runs it: one file, outside the Django project."""

import importlib.util
from pathlib import Path

AGENT_PATH = (
    Path(__file__).resolve().parents[2]
    / "kernodeck"
    / "provisioning"
    / "agent"
    / "kernodeck_agent.py"
)


def load_agent():
    spec = importlib.util.spec_from_file_location("kernodeck_agent_under_test", AGENT_PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
