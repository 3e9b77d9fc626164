"""An order reference inside a translated sentence, on one line: KD-98YT-QE63 never breaks."""

from django.utils.html import escape, format_html
from django.utils.safestring import SafeString


def with_reference(message: str, *, reference: str) -> SafeString:
    """`message` (with a `%(reference)s` placeholder) as HTML, the reference in a `code.ref`."""
    template = (
        escape(message).replace("{", "{{").replace("}", "}}").replace("%(reference)s", "{ref}")
    )
    return format_html(template, ref=format_html('<code class="ref">{}</code>', reference))
