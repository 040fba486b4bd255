from django.urls import path, re_path

from labels import verdict_views, views

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
    path("verdicts/", verdict_views.queue_list, name="verdicts-queues"),
    path("verdicts/new/", verdict_views.queue_new, name="verdicts-queue-new"),
    path("verdicts/<int:pk>/next/", verdict_views.queue_next, name="verdicts-next"),
    path("verdicts/<int:pk>/runs/<int:run>/", verdict_views.label_run, name="verdicts-label"),
    path("verdicts/<int:pk>/skips/clear/", verdict_views.clear_skips, name="verdicts-clear-skips"),
    path("verdicts/agreement/", verdict_views.agreement, name="verdicts-agreement"),
    path("verdicts/agreement/data.json", verdict_views.agreement_data, name="verdicts-agreement-data"),
    re_path(
        r"^verdicts/agreement/export\.(?P<fmt>csv|json)$",
        verdict_views.agreement_export,
        name="verdicts-agreement-export",
    ),
    re_path(r"^verdicts/labels\.(?P<fmt>csv|json)$", verdict_views.labels_export, name="verdicts-labels-export"),
    path("verdicts/runs/<int:run>/adjudicate/", verdict_views.adjudicate, name="verdicts-adjudicate"),
]
