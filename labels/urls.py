from django.urls import path, re_path

from labels import views

urlpatterns = [
    path("", views.queue_list, name="labels-queues"),
    path("queues/<int:pk>/next/", views.queue_next, name="labels-next"),
    path("queues/<int:pk>/runs/<int:run>/", views.label_run, name="labels-label"),
    path("queues/<int:pk>/runs/<int:run>/events.json", views.label_events, name="labels-events"),
    path("queues/<int:pk>/skips/clear/", views.clear_skips, name="labels-clear-skips"),
    path("agreement/", views.agreement, name="labels-agreement"),
    path("agreement/data.json", views.agreement_data, name="labels-agreement-data"),
    re_path(r"^agreement/export\.(?P<fmt>csv|json)$", views.agreement_export, name="labels-agreement-export"),
    re_path(r"^export/(?P<table>labels|runs)\.(?P<fmt>csv|json)$", views.labels_export, name="labels-export"),
    path("composition.json", views.composition, name="labels-composition"),
]
