from django.urls import path

from kernodeck.orders import views

app_name = "orders"
urlpatterns = [
    path("", views.order_list, name="list"),
    path("new/", views.new, name="new"),
    path("<str:reference>/", views.detail, name="detail"),
    path("<str:reference>/state/", views.state, name="state"),
    path("<str:reference>/cancel/", views.cancel, name="cancel"),
]
