from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView

from memories.api import views

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(authentication_classes=[], permission_classes=[]), name="schema"),
    re_path(r"^memories/?$", views.MemoryCollectionView.as_view(), name="memories"),
    re_path(r"^memories/batch/?$", views.MemoryBatchView.as_view(), name="memories-batch"),
    re_path(r"^memories/search/?$", views.SearchView.as_view(), name="memories-search"),
    re_path(r"^memories/forget/?$", views.ForgetView.as_view(), name="memories-forget"),
    re_path(r"^memories/validate/?$", views.ValidateView.as_view(), name="memories-validate"),
    re_path(r"^memories/history/?$", views.FactKeyHistoryView.as_view(), name="memories-history"),
    re_path(r"^memories/(?P<memory_id>[^/]+)/history/?$", views.MemoryHistoryView.as_view(), name="memory-history"),
    re_path(r"^memories/(?P<memory_id>[^/]+)/?$", views.MemoryDetailView.as_view(), name="memory"),
    re_path(r"^recall-context/?$", views.RecallContextView.as_view(), name="recall-context"),
    re_path(r"^workspaces/?$", views.WorkspaceListView.as_view(), name="workspaces"),
    re_path(r"^agent/consent/?$", views.AgentConsentView.as_view(), name="agent-consent"),
]
