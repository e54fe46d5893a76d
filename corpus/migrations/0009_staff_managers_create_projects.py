"""Managers used to be staff accounts, and staff could create projects. Creating projects now takes the
`corpus.add_project` permission (and the admin, superusers): the staff accounts of a deployment keep what they could
do by receiving the permission once. Their staff flag no longer opens anything."""

from django.contrib.auth.management import create_permissions
from django.db import migrations


def grant(apps, schema_editor):
    Permission = apps.get_model("auth", "Permission")
    User = apps.get_model("auth", "User")
    staff = User.objects.filter(is_staff=True, is_superuser=False)
    if not staff.exists():
        return
    # Permission rows are made after the migrations run (post_migrate); make corpus's now, for this one to use.
    config = apps.get_app_config("corpus")
    config.models_module = True
    create_permissions(config, apps=apps, verbosity=0)
    config.models_module = None
    add_project = Permission.objects.filter(codename="add_project", content_type__app_label="corpus").first()
    if add_project is None:
        return
    for user in staff:
        user.user_permissions.add(add_project)


class Migration(migrations.Migration):
    dependencies = [
        ("corpus", "0008_project_redundancy"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(grant, migrations.RunPython.noop)]
