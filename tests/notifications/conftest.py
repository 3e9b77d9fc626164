import pytest

FAILING_BACKEND = "tests.notifications.backends.FailingBackend"
LOCMEM_BACKEND = "django.core.mail.backends.locmem.EmailBackend"


@pytest.fixture
def send_after_commit(django_capture_on_commit_callbacks):
    """Run on_commit callbacks (the e-mail tasks) when the block's work would commit."""

    def capture():
        return django_capture_on_commit_callbacks(execute=True)

    return capture
