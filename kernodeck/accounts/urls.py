from django.urls import path

from kernodeck.accounts import views

app_name = "accounts"
urlpatterns = [
    path("register/", views.register, name="register"),
    path("sign-in/", views.signin, name="signin"),
    path("sign-out/", views.signout, name="signout"),
    path("", views.account, name="account"),
    path("profile/", views.profile_update, name="profile"),
    path("password/", views.password_change, name="password"),
    # Staff send this link after checking who asked; there is no self-service reset.
    path("new-password/<str:uidb64>/<str:token>/", views.password_new, name="password_new"),
    path("sessions/end-others/", views.sessions_end_others, name="sessions_end_others"),
    path("tokens/", views.token_create, name="token_create"),
    path("tokens/<int:token_id>/revoke/", views.token_revoke, name="token_revoke"),
    path("ssh-keys/", views.ssh_key_add, name="ssh_key_add"),
    path("ssh-keys/<int:key_id>/remove/", views.ssh_key_remove, name="ssh_key_remove"),
]
