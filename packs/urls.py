from django.urls import path

from packs import views

urlpatterns = [
    path("", views.pack_list, name="pack-list"),
    path("<int:pk>/", views.pack_detail, name="pack-detail"),
]
