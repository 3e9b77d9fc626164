"""Take screenshots of the key pages of a running Kernodeck, at desktop and phone width.

    .venv/bin/python scripts/screenshots.py http://127.0.0.1:8000 EMAIL PASSWORD OUTDIR

Signs in with the given login for the pages that need it. Uses Debian's chromium.
"""

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PUBLIC = {
    "home": "/",
    "register": "/account/register/",
    "signin": "/account/sign-in/",
    "faq": "/faq/",
}
PRIVATE = {"account": "/account/"}
WIDTHS = {"desktop": 1280, "phone": 390}


def main(base, email, password, outdir, *extra):
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    private = dict(PRIVATE)
    for item in extra:
        name, path = item.split("=", 1)
        private[name] = path
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
        for label, width in WIDTHS.items():
            context = browser.new_context(viewport={"width": width, "height": 900}, locale="es-ES")
            page = context.new_page()
            for name, path in PUBLIC.items():
                page.goto(base + path)
                page.screenshot(path=out / f"{name}-{label}.png", full_page=True)
            page.goto(base + "/account/sign-in/")
            page.fill("input[name=email]", email)
            page.fill("input[name=password]", password)
            page.click("main form button[type=submit]")
            page.wait_for_url("**/account/")
            for name, path in private.items():
                page.goto(base + path)
                page.screenshot(path=out / f"{name}-{label}.png", full_page=True)
            context.close()
        browser.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
