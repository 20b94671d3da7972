"""``/api/v1/ledger/…``: one POST route per ledger tool, the tool's arguments as the JSON body."""

from django.urls import re_path

from ledger import api

urlpatterns = [
    re_path(r"^ledger/entries/?$", api.LedgerRecordView.as_view(), name="ledger-record"),
    re_path(r"^ledger/list/?$", api.LedgerListView.as_view(), name="ledger-list"),
    re_path(r"^ledger/balance/?$", api.LedgerBalanceView.as_view(), name="ledger-balance"),
    re_path(r"^ledger/reverse/?$", api.LedgerReverseView.as_view(), name="ledger-reverse"),
    re_path(r"^ledger/upcoming/?$", api.LedgerUpcomingView.as_view(), name="ledger-upcoming"),
    re_path(r"^ledger/complete/?$", api.LedgerCompleteView.as_view(), name="ledger-complete"),
]
