"""`core.forms.fields_html` writes an unbound form's fields as forms/fields.html does
through Django's field and widget templates (issue 27: the node page's and the fleet's
forms), byte for byte, in English and in Spanish, with values that need escaping; any
form it does not know goes through the template."""

import pytest
from django import forms
from django.template.loader import render_to_string
from django.utils import translation

from kernodeck.backoffice.node_forms import HostKeyAcceptForm, NodeSshForm
from kernodeck.core.forms import Form, fields_html
from kernodeck.ledger.forms import TopUpForm
from kernodeck.provisioning.forms import NodeForm, NodeStateForm

NASTY = "<script>alert('x')</script> & \"quoted\""


class Radios(Form):
    pick = forms.ChoiceField(
        label=NASTY,
        choices=[("a&", "A <1>"), ("b", NASTY), (3, "three")],
        widget=forms.RadioSelect,
    )
    other = forms.ChoiceField(
        label="Other", choices=[("x", "X")], required=False, widget=forms.RadioSelect
    )
    none = forms.ChoiceField(label="None", choices=[], widget=forms.RadioSelect)


class HelpedRadios(Form):
    pick = forms.ChoiceField(
        label="Pick", choices=[("a", "A")], widget=forms.RadioSelect, help_text="Help"
    )


class GroupedRadios(Form):
    pick = forms.ChoiceField(
        label="Pick", choices=[("Group", [("a", "A")])], widget=forms.RadioSelect
    )


class Grouped(Form):
    pick = forms.ChoiceField(label="Pick", choices=[("Group <1>", [("a", "A & a")])])


class Plain(Form):
    mail = forms.EmailField(label=NASTY, help_text="<b>bold</b> help")
    site = forms.URLField(
        label="Site", required=False, assume_scheme="https", initial="https://x.test/?a=1&b='2'"
    )
    pick = forms.ChoiceField(label="Pick", choices=[("a&", "A <1>"), ("b", "B")], initial="b")


FORMS = [
    lambda: NodeSshForm(None),
    lambda: NodeSshForm(
        None,
        initial={
            "retention_hours": 24,
            "agent_dir": NASTY,
            "torch_index_url": None,
            "inference_model": "",
            "recipe_python": NASTY + "\n\nline two\n",
            "recipe_inference": "0",
        },
    ),
    lambda: NodeForm(None),
    lambda: NodeForm(None, initial={"name": NASTY, "driver": "ssh", "port": 2222, "notes": "0"}),
    lambda: Plain(None),
    lambda: Plain(None, initial={"mail": NASTY, "pick": "a&"}),
    lambda: Radios(None),
    lambda: Radios(None, initial={"pick": "a&", "other": "x"}),
    lambda: Radios(None, initial={"pick": 3}),
    lambda: TopUpForm(None),  # the balance page's: the amounts in the page's language
    lambda: HelpedRadios(None),  # a fieldset with a help text: through the template
    lambda: GroupedRadios(None),  # option groups: through the template
    lambda: NodeStateForm(None),  # a checkbox: through the template
    lambda: HostKeyAcceptForm(None),  # a hidden input: through the template
    lambda: Grouped(None),  # option groups: through the template
]


@pytest.mark.parametrize("language", ["en", "es"])
@pytest.mark.parametrize("make", FORMS)
def test_the_fields_are_djangos_fields(language, make):
    with translation.override(language):
        form = make()
        assert fields_html(form) == render_to_string("forms/fields.html", {"form": form})


def test_radio_labels_and_values_are_escaped():
    html = fields_html(Radios(None, initial={"pick": "a&"}))
    assert "<script>" not in html
    assert "<legend>&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp;" in html
    assert 'value="a&amp;" required id="id_pick_0" checked>\n A &lt;1&gt;</label>' in html


def test_labels_and_values_are_escaped_and_help_texts_are_the_forms_html():
    html = fields_html(Plain(None, initial={"mail": NASTY}))
    assert "<script>" not in html
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; &quot;quoted&quot;" in html
    assert "<b>bold</b> help" in html
    assert '<option value="a&amp;">A &lt;1&gt;</option>' in html
    assert '<option value="b" selected>B</option>' in html


@pytest.mark.parametrize(
    "form", [NodeSshForm({"retention_hours": "", "agent_dir": NASTY}), NodeForm({"port": "x"})]
)
def test_a_bound_form_with_errors_goes_through_djangos_templates(form):
    assert not form.is_valid()
    html = fields_html(form)
    assert html == render_to_string("forms/fields.html", {"form": form})
    assert 'class="errorlist"' in html


@pytest.mark.parametrize(
    "make", [lambda: Radios(None, initial={"pick": "b"}), lambda: TopUpForm(None)]
)
def test_radio_buttons_are_written_without_the_template_engine(make, monkeypatch):
    form = make()
    expected = render_to_string("forms/fields.html", {"form": form})

    def refused(*args, **kwargs):
        raise AssertionError("through the template")

    monkeypatch.setattr("kernodeck.core.forms.render_to_string", refused)
    assert fields_html(form) == expected
