from django.urls import path

from kernodeck.backoffice import nodes

app_name = "backoffice_nodes"
urlpatterns = [
    path("", nodes.node_list, name="list"),
    path("<slug:name>/", nodes.node_detail, name="detail"),
]
