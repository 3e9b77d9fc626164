"""The sizing page, the guides and the environment check's download. Thin: the selectors
compute, the templates show."""

from pathlib import Path

from django.http import Http404, HttpResponse
from django.shortcuts import render

from kernodeck.core import fragments, pagecache
from kernodeck.core.errors import InvalidInput
from kernodeck.sizing import estimator, guides
from kernodeck.sizing.charts import PART_LABELS, build_chart
from kernodeck.sizing.forms import SizingForm
from kernodeck.sizing.selectors import architecture_from_input, sizing_report
from kernodeck.sizing.wording import (
    assumptions_in_words,
    measure_command,
    recommendation_note,
    suggestion_in_words,
    unstated_in_words,
)

STANDALONE = Path(__file__).with_name("standalone")
ENVCHECK = STANDALONE / "envcheck.py"
EXAMPLES = STANDALONE


@pagecache.shared_page  # the empty form only: a submitted one has parameters
def sizing(request):
    """GET /sizing/: the form, and for a submitted workload its estimate and the offers."""
    submitted = "mode" in request.GET
    form = SizingForm(request.GET if submitted else None)
    context = {"form": form, "margin_percent": round(estimator.MARGIN * 100)}
    if not submitted:
        # The empty form is the same for every visitor in a language: rendered once
        # (core/fragments.py); its fields' group rendering was most of the page's time.
        context["form_html"] = fragments.rendered(
            "sizing/_form.html", lambda: {"form": SizingForm()}
        )
    if submitted and form.is_valid():
        try:
            label, arch = architecture_from_input(
                preset=form.chosen_preset(), architecture=form.chosen_architecture()
            )
            report = sizing_report(
                label=label,
                workload=estimator.Workload(arch, **form.workload_values()),
                days=form.cleaned_data.get("days") or 7,
            )
        except InvalidInput as error:
            field = (error.field or "").rpartition(".")[2]
            form.add_error(field if field in form.fields else None, error.message)
        else:
            context.update(
                report=report,
                chart=build_chart(report),
                chart_narrow=build_chart(report, narrow=True),
                assumptions=assumptions_in_words(report.estimate),
                unstated=unstated_in_words(report),
                margin_percent=report.margin_percent,
                command=measure_command(report.per_gpu_gib),
                breakdown=[(PART_LABELS[part], gib) for part, gib in report.breakdown.items()],
                offers=[(r, recommendation_note(r)) for r in report.recommendations],
                suggestions=[suggestion_in_words(g) for g in report.suggestions],
            )
    return render(request, "sizing/sizing.html", context)


@pagecache.shared_page
def guide_index(request):
    """GET /guides/: every practical guide with its one-line summary."""
    return render(request, "sizing/guides.html", {"guides": list(guides.GUIDES.values())})


@pagecache.shared_page
def guide(request, slug: str):
    page = guides.GUIDES.get(slug)
    if page is None:
        raise Http404

    def context() -> dict:
        context = {"guide": page, "guides": list(guides.GUIDES.values())}
        if page.example:
            context.update(
                example_name=page.example, example=(EXAMPLES / page.example).read_text("utf-8")
            )
        return context

    # The guide's content is rendered once per language (core/fragments.py); `slug` is
    # one of the known guides' (an unknown one is a 404 above).
    content = fragments.rendered("sizing/_guide_content.html", context, key=page.slug)
    return render(request, "sizing/guide.html", {"guide": page, "content": content})


def example_download(request, name: str):
    """A guide's runnable example, by its file name (only the examples the guides show)."""
    if name not in {page.example for page in guides.GUIDES.values() if page.example}:
        raise Http404
    response = HttpResponse(
        (EXAMPLES / name).read_bytes(), content_type="text/x-python; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def envcheck_download(request):
    """The environment check as the one file customers run with their own interpreter."""
    response = HttpResponse(ENVCHECK.read_bytes(), content_type="text/x-python; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="kernodeck-envcheck.py"'
    return response
