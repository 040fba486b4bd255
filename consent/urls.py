from django.urls import path

from consent import views

# Consent sensitivity of paired campaigns.
urlpatterns = [
    path("", views.consent_page, name="consent-sensitivity"),
    path("data.json", views.consent_data_view, name="consent-data"),
    path("pairs/<int:campaign>/<str:pair_key>/", views.consent_pair, name="consent-pair"),
]
