from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0011_run_limits"),
    ]

    operations = [
        migrations.AddField(
            model_name="campaign",
            name="queue",
            field=models.CharField(
                blank=True,
                help_text="The rq queue its run jobs go to while a run_campaign command's own workers serve it; "
                "empty: the install's runs queue (RUNS_QUEUE), which every worker reads.",
                max_length=100,
            ),
        ),
        migrations.AddField(
            model_name="campaign",
            name="queue_since",
            field=models.DateTimeField(blank=True, help_text="When it was routed to its own queue.", null=True),
        ),
    ]
