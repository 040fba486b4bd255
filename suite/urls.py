from django.urls import path

from suite import views

# UnderSpecBench results and task families.
urlpatterns = [
    path("", views.suite_results, name="suite-results"),
    path("data.json", views.suite_results_data, name="suite-data"),
    path("families/", views.family_list, name="suite-families"),
    path("families/<slug:slug>/", views.family_detail, name="suite-family"),
    path("families/<slug:slug>/runs.json", views.family_runs, name="suite-family-runs"),
]
