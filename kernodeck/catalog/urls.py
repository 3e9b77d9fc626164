from django.urls import path

from kernodeck.catalog import views

app_name = "catalog"
urlpatterns = [
    path("", views.catalog, name="list"),
    path("<slug:slug>/", views.configure, name="configure"),
    path("<slug:slug>/summary/", views.configure_summary, name="summary"),
]
