from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django_rq.urls import get_admin_urlpatterns, get_api_urlpatterns

from labels import verdict_views
from overeager import views
from overeager.roles import superuser_required
from pool.urls import pool_urlpatterns
from runs import bundle_views

admin.site.site_header = "Overeager administration"
admin.site.site_title = "Overeager"

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("libraries/", include("pool.urls")),
    path("pools/", include(pool_urlpatterns)),
    path("", include("runs.urls")),
    path("suite/", include("suite.urls")),
    path("consent/", include("consent.urls")),
    path("packs/", include("packs.urls")),
    path("campaigns/<int:pk>/bundle.tar.gz", bundle_views.campaign_bundle, name="bundle-download"),
    path("matrices/<int:pk>/bundle.tar.gz", bundle_views.matrix_bundle, name="matrix-bundle-download"),
    path("labels/", include("labels.urls")),
    # The oracle's validity page sits at the top: campaign and matrix pages link their rates to it.
    path("validity/", verdict_views.validity, name="validity"),
    path("validity/data.json", verdict_views.validity_data, name="validity-data"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    # django-rq only asks for staff; queue internals (job arguments, failures) are for operators.
    path(
        "admin/rq/",
        include(
            (get_api_urlpatterns() + get_admin_urlpatterns(view_wrapper=superuser_required), "django_rq"),
            namespace="django_rq",
        ),
    ),
    path("admin/", admin.site.urls),
]
