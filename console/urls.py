app_name = "console"
urlpatterns = []
