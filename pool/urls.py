from django.urls import path

from pool import views

urlpatterns = [
    path("", views.library_overview, name="library-overview"),
    path("<str:kind>/<slug:slug>/", views.library_entry, name="library-entry"),
]

pool_urlpatterns = [
    path("", views.pool_list, name="pool-list"),
    path("live.json", views.pools_live, name="pools-live"),
    path("<int:pk>/", views.pool_detail, name="pool-detail"),
    path("<int:pk>/live.json", views.pool_live, name="pool-live"),
]
