from django.urls import path

from runs.consumers import ProgressConsumer

websocket_urlpatterns = [path("ws/progress/<str:topic>/", ProgressConsumer.as_asgi())]
