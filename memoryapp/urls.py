from django.urls import include, path

urlpatterns = [
    path("", include("console.urls")),
    path("", include("api.urls")),
]
