"""The protocol page's versions in a real browser: the list with each version's hash and
runs, and the diff of two versions with added and removed lines marked."""

from __future__ import annotations

from kairos.service import Kairos
from tests.web.conftest import Site

DOC = """# Browser versions check

## Build
Build the release artifacts.

PROOF OF WORK: make build

## Publish
Publish the release.

PROOF OF WORK: make publish
"""


def test_versions_list_and_diff_on_the_protocol_page(site: Site, kairos: Kairos) -> None:
    steps = [s["uri"] for s in kairos.mint(DOC)["items"][0]["steps"]]
    kairos.mint(DOC.replace("Publish the release.", "Publish the signed release."),
                force_update=True)
    kairos.begin(steps[0])
    listed = kairos.versions(steps[0])["versions"]
    page = site.go(f"#/protocol/{steps[0].removeprefix('kairos://mem/')}")
    rows = page.wait_for_selector("#versions table.versions")
    assert page.locator("#versions tbody tr").count() == 2
    current = page.locator('#versions tr[data-version="2"]').inner_text()
    assert "current" in current and listed[1]["content_hash"][:12] in current
    assert page.locator('#versions tr[data-version="2"] td').nth(4).inner_text() == "1"
    del rows
    page.select_option('#versions select[name="from"]', "1")
    page.select_option('#versions select[name="to"]', "2")
    page.click("#versions button")
    page.wait_for_selector("#diff")
    removed = page.locator('#diff [data-kind="removed"]').all_inner_texts()
    added = page.locator('#diff [data-kind="added"]').all_inner_texts()
    assert any("Publish the release." in line for line in removed)
    assert any("Publish the signed release." in line for line in added)
    assert page.locator("#diff del").count() >= 1 and page.locator("#diff ins").count() >= 1
    site.check_offline()
