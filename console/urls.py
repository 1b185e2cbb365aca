from django.urls import path
from django.views.generic import RedirectView

from console import admin_views, review_views, views

app_name = "console"

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="console:home", permanent=False), name="root"),
    path("console/", views.home, name="home"),
    path("console/login/", views.login_view, name="login"),
    path("console/logout/", views.logout_view, name="logout"),
    path("console/signed-out/", views.signed_out, name="signed_out"),
    path("console/link/<str:token>", views.signin_link, name="signin_link"),
    path("console/memories/", views.memory_list, name="memories"),
    path("console/memories/<str:memory_id>/", views.memory_detail, name="memory_detail"),
    path("console/memories/<str:memory_id>/correct/", views.memory_correct_view, name="memory_correct"),
    path("console/memories/<str:memory_id>/forget/", views.memory_forget_view, name="memory_forget"),
    path("console/review/", review_views.review, name="review"),
    path("console/review/inferred/<str:memory_id>/<str:decision>/", review_views.candidate_decide,
         name="candidate_decide"),
    path("console/review/conflicts/<str:conflict_id>/", review_views.conflict_decide, name="conflict_decide"),
    path("console/data/", views.data, name="data"),
    path("console/reads/", views.reads, name="reads"),
    path("console/data/export/", views.data_export, name="data_export"),
    path("console/data/erase/", views.data_erase, name="data_erase"),
    path("console/jobs/<str:job_id>/", views.job_detail, name="job"),
    path("console/erasure/<str:job_id>/", views.erasure_status, name="erasure"),
    path("console/exports/<str:export_id>/download/", views.export_download, name="export_download"),
    path("console/admin/audit/", admin_views.audit_log, name="admin_audit"),
    path("console/admin/memories/<str:memory_id>/", admin_views.memory_detail, name="admin_memory"),
    path("console/admin/jobs/", admin_views.jobs, name="admin_jobs"),
    path("console/admin/jobs/<str:job_id>/retry/", admin_views.job_retry_view, name="admin_job_retry"),
    path("console/admin/quarantine/", admin_views.quarantine, name="admin_quarantine"),
    path("console/admin/quarantine/<str:event_id>/<str:decision>/", admin_views.quarantine_decide,
         name="admin_quarantine_decide"),
    path("console/admin/approvals/", admin_views.approvals, name="admin_approvals"),
    path("console/admin/approvals/<str:memory_id>/<str:decision>/", admin_views.approval_decide,
         name="admin_approval_decide"),
    path("console/admin/conflicts/", review_views.admin_conflicts, name="admin_conflicts"),
    path("console/admin/keys/", admin_views.api_keys, name="admin_keys"),
    path("console/admin/keys/<uuid:key_id>/revoke/", admin_views.api_key_revoke_view, name="admin_key_revoke"),
    path("console/admin/keys/<uuid:key_id>/reads/", admin_views.api_key_reads, name="admin_key_reads"),
]
