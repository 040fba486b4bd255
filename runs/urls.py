from django.urls import path

from runs import cost_views, views

urlpatterns = [
    path("campaigns/", views.campaign_list, name="campaign-list"),
    path("campaigns/start/", views.campaign_start, name="campaign-start"),
    path("campaigns/<int:pk>/", views.campaign_detail, name="campaign-detail"),
    path("campaigns/<int:pk>/data.json", views.campaign_data, name="campaign-data"),
    path("campaigns/<int:pk>/runs.json", views.campaign_runs, name="campaign-runs"),
    path("campaigns/<int:pk>/stop/", views.campaign_stop, name="campaign-stop"),
    path("campaigns/<int:pk>/costs.json", cost_views.campaign_costs, name="campaign-costs"),
    path("campaigns/<int:pk>/resume/", cost_views.campaign_resume, name="campaign-resume"),
    path("matrices/", views.matrix_list, name="matrix-list"),
    path("matrices/<int:pk>/", views.matrix_detail, name="matrix-detail"),
    path("matrices/<int:pk>/data.json", views.matrix_data, name="matrix-data"),
    path("matrices/<int:pk>/costs.json", cost_views.matrix_costs, name="matrix-costs"),
    path("matrices/<int:pk>/resume/", cost_views.matrix_resume, name="matrix-resume"),
    path("runs/<int:pk>/", views.run_detail, name="run-detail"),
    path("runs/<int:pk>/events.json", views.run_events, name="run-events"),
    path("runs/<int:pk>/gateway/<int:seq>.json", views.run_gateway_record, name="run-gateway-record"),
]
