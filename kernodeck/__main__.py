"""The `kernodeck` command: Django's manage.py for this project."""

import os
import sys


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    if sys.argv[1:2] == ["demo"]:
        from kernodeck.demo.profile import apply_demo_environment

        apply_demo_environment()

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
