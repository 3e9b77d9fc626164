"""`python -m kernodeck.provisioning.agent OUT.pyz`: writes the agent's zipapp."""

import hashlib
import sys

from kernodeck.provisioning.agent import ARCHIVE_NAME, write_zipapp, zipapp_bytes

target = write_zipapp(sys.argv[1] if len(sys.argv) > 1 else ARCHIVE_NAME)
print(f"{target} sha256 {hashlib.sha256(zipapp_bytes()).hexdigest()}")
