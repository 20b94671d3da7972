from django.urls import path
from drf_spectacular.views import SpectacularAPIView

from memories.api import views

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(authentication_classes=[], permission_classes=[]), name="schema"),
    path("workspaces", views.WorkspaceListView.as_view(), name="workspaces"),
]
