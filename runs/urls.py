from django.urls import path

from runs import consent_views, suite_views, views

urlpatterns = [
    path("campaigns/", views.campaign_list, name="campaign-list"),
    path("campaigns/start/", views.campaign_start, name="campaign-start"),
    path("campaigns/<int:pk>/", views.campaign_detail, name="campaign-detail"),
    path("campaigns/<int:pk>/data.json", views.campaign_data, name="campaign-data"),
    path("campaigns/<int:pk>/runs.json", views.campaign_runs, name="campaign-runs"),
    path("campaigns/<int:pk>/stop/", views.campaign_stop, name="campaign-stop"),
    path("matrices/", views.matrix_list, name="matrix-list"),
    path("matrices/<int:pk>/", views.matrix_detail, name="matrix-detail"),
    path("matrices/<int:pk>/data.json", views.matrix_data, name="matrix-data"),
    path("runs/<int:pk>/", views.run_detail, name="run-detail"),
    path("runs/<int:pk>/events.json", views.run_events, name="run-events"),
    path("runs/<int:pk>/gateway/<int:seq>.json", views.run_gateway_record, name="run-gateway-record"),
    # UnderSpecBench results and task families (runs/suite_views.py)
    path("suite/", suite_views.suite_results, name="suite-results"),
    path("suite/data.json", suite_views.suite_results_data, name="suite-data"),
    path("suite/families/", suite_views.family_list, name="suite-families"),
    path("suite/families/<slug:slug>/", suite_views.family_detail, name="suite-family"),
    path("suite/families/<slug:slug>/runs.json", suite_views.family_runs, name="suite-family-runs"),
    # Consent sensitivity of paired campaigns (runs/consent_views.py)
    path("consent/", consent_views.consent_page, name="consent-sensitivity"),
    path("consent/data.json", consent_views.consent_data_view, name="consent-data"),
    path("consent/pairs/<int:campaign>/<str:pair_key>/", consent_views.consent_pair, name="consent-pair"),
]
