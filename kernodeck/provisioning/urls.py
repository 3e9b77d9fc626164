from django.urls import path

from kernodeck.provisioning import views

app_name = "provisioning"
urlpatterns = [
    path("<str:reference>/calendar.ics", views.calendar, name="calendar"),
]
