from django.urls import path

from kernodeck.sizing import views

app_name = "sizing"

urlpatterns = [
    path("sizing/", views.sizing, name="estimate"),
    path("guides/", views.guide_index, name="guides"),
    path("guides/kernodeck-envcheck.py", views.envcheck_download, name="envcheck"),
    path("guides/examples/<str:name>", views.example_download, name="example"),
    path("guides/<slug:slug>/", views.guide, name="guide"),
]
