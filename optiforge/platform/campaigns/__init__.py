"""Campaigns: persisted, resumable runs of an agent on a task (one loop, one step per kind)."""

from optiforge.platform.campaigns.report import CampaignReport, ProgressCallback, report_to_json
from optiforge.platform.campaigns.runner import create_campaign, drive, run_campaign
from optiforge.platform.campaigns.summary import campaign_summary, export_records

__all__ = [
    "CampaignReport",
    "ProgressCallback",
    "campaign_summary",
    "create_campaign",
    "drive",
    "export_records",
    "report_to_json",
    "run_campaign",
]
