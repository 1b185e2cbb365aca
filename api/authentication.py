from rest_framework.authentication import BaseAuthentication


class ApiKeyAuthentication(BaseAuthentication):
    def authenticate(self, request):
        return None
