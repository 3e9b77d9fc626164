from django import template
from django.utils.translation import gettext as _

register = template.Library()


@register.filter
def rental_countdown(seconds) -> str:
    """Seconds left as "2 d 5 h 13 min" (the page's script keeps it ticking)."""
    seconds = max(0, int(seconds or 0))
    if seconds == 0:
        return _("Ended")
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    return _("%(d)d d %(h)d h %(m)d min") % {"d": days, "h": hours, "m": rest // 60}


@register.filter
def rental_duration(seconds) -> str:
    """A waiting time as "1 d 2 h 5 min" (the desk)."""
    seconds = max(0, int(seconds or 0))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    return _("%(d)d d %(h)d h %(m)d min") % {"d": days, "h": hours, "m": rest // 60}
