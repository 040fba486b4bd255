from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0006_modelendpoint_model_required_for_providers"),
    ]

    operations = [
        # The dashboard's index grows the tier, so the uniform-reserve counts stay index-only.
        migrations.RemoveIndex(
            model_name="run",
            name="runs_run_campaig_c6932a_idx",
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(
                fields=["campaign", "status", "archetype", "consent", "overeager", "tier"],
                name="runs_run_campaig_692946_idx",
            ),
        ),
        migrations.AddField(
            model_name="run",
            name="propensity",
            field=models.FloatField(
                blank=True,
                help_text="P(this slot went to this cell | the campaign's state when its round was allocated).",
                null=True,
            ),
        ),
        migrations.AlterField(
            model_name="run",
            name="tier",
            field=models.CharField(blank=True, help_text="Scheduler tier: uniform, coverage or yield.", max_length=10),
        ),
    ]
