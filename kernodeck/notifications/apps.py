from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    name = "kernodeck.notifications"
    verbose_name = "E-mail and reminders"
