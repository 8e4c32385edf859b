"""submit / submissions / quota, and push's GPU-quota guard, through the official kaggle client against the
fake Kaggle API (the real CLI in a subprocess, as in test_push)."""
import pytest
import test_push
from test_push import INFERENCE, KEY, error_line, kit

env = test_push.env  # the same fixtures: credentials and the client pointed at the fake, fast retries
pair = test_push.pair  # dog-breed with an [inference] table, whose inference kernel is the one submitted

TRAINING = "tester/dog-breed-efficientnet"


def test_submit_sends_the_inference_kernels_latest_version(env, fake_kaggle, pair):
    out = kit(env, "submit", pair)
    assert out.returncode == 0, out.stderr
    (get,) = fake_kaggle.called("GetKernel")
    assert get.body == {"userName": "tester", "kernelSlug": "dog-breed-efficientnet-inference"}
    (call,) = fake_kaggle.called("CreateCodeSubmission")
    assert call.body == {
        "competitionName": "dog-breed-identification", "kernelOwner": "tester",
        "kernelSlug": "dog-breed-efficientnet-inference", "kernelVersion": 3, "fileName": "submission.csv",
        "submissionDescription": f"kit {INFERENCE} v3",
    }
    assert fake_kaggle.called("ListSubmissions")[0].body["competitionName"] == "dog-breed-identification"
    lines = out.stdout.splitlines()
    assert lines[0] == (f"submitted {INFERENCE} version 3 to dog-breed-identification: Successfully submitted to "
                        "dog-breed-identification")
    assert lines[1].startswith("submission 50001: 2026-11-23 10:00  PENDING") and lines[1].endswith(f"kit {INFERENCE} v3")


def test_submit_with_version_and_message_submits_the_training_kernel(env, fake_kaggle):
    out = kit(env, "submit", "dog-breed", "-v", "2", "-m", "first try, 'quoted'")
    assert out.returncode == 0, out.stderr
    (call,) = fake_kaggle.called("CreateCodeSubmission")
    assert call.body["kernelSlug"] == "dog-breed-efficientnet" and call.body["kernelVersion"] == 2
    assert call.body["submissionDescription"] == "first try, 'quoted'" and call.body["fileName"] == "submission.csv"
    assert not fake_kaggle.called("GetKernel")  # an explicit version needs no look-up
    assert f"submitted {TRAINING} version 2" in out.stdout


def test_submit_refuses_a_latest_version_that_has_not_completed(env, fake_kaggle, pair):
    fake_kaggle.script("GetKernelSessionStatus", (200, {"status": "RUNNING"}))
    line = error_line(kit(env, "submit", pair))
    assert f"{INFERENCE} version 3 is RUNNING on Kaggle" in line and "INFER=1 WAIT=1" in line and "VERSION=N" in line
    assert not fake_kaggle.called("CreateCodeSubmission")


def test_submit_needs_a_version_when_kaggle_gives_none(env, fake_kaggle):
    fake_kaggle.script("GetKernel", (200, {"metadata": {"ref": TRAINING, "slug": "dog-breed-efficientnet"}, "blob": {}}))
    line = error_line(kit(env, "submit", "dog-breed"))
    assert "pass VERSION=N (-v N)" in line
    assert not fake_kaggle.called("CreateCodeSubmission")


def test_submissions_lists_date_status_score_and_description(env, fake_kaggle):
    fake_kaggle.submissions.extend([
        fake_kaggle.submission(1, "kit v1", "COMPLETE", "0.41230", "2026-11-20T08:30:00.000Z"),
        fake_kaggle.submission(2, "kit v2", "ERROR", "", "2026-11-21T09:15:00.000Z") | {"errorDescription": "Notebook Timeout"},
    ])
    out = kit(env, "submissions", "dog-breed")
    assert out.returncode == 0, out.stderr
    assert [" ".join(line.split()) for line in out.stdout.splitlines()] == [
        "2026-11-21 09:15 ERROR - kit v2 (Notebook Timeout)",
        "2026-11-20 08:30 COMPLETE 0.41230 kit v1",
    ]
    assert fake_kaggle.called("ListSubmissions")[0].body["competitionName"] == "dog-breed-identification"


def test_submissions_when_there_are_none(env, fake_kaggle):
    out = kit(env, "submissions", "dog-breed")
    assert out.returncode == 0 and out.stdout == "no submissions to dog-breed-identification yet\n", out.stderr


def test_quota_shows_hours_used_left_and_refresh(env, fake_kaggle):
    fake_kaggle.script("GetAcceleratorQuotaStatistics", (200, fake_kaggle.quota(used_h=12.5, reserved_h=2)))
    out = kit(env, "quota")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "GPU: 12.5 h used of 30.0 h (2.0 h held by running sessions), 15.5 h left this week; refreshes 2026-11-28 00:00 UTC",
        "TPU: 0.0 h used of 20.0 h, 20.0 h left this week; refreshes 2026-11-28 00:00 UTC",
    ]
    assert len(fake_kaggle.called("GetAcceleratorQuotaStatistics")) == 1


# -- push's GPU-quota guard --------------------------------------------------------------------------------------

def test_push_refused_when_the_gpu_hours_left_are_fewer_than_the_budget(env, fake_kaggle, unplanned):
    fake_kaggle.script("GetAcceleratorQuotaStatistics", (200, fake_kaggle.quota(used_h=25)))
    line = error_line(kit(env, "push", unplanned))
    assert ("5.0 GPU hours left this week (it refreshes 2026-11-28 00:00 UTC), fewer than the 11.8 h its run may "
            "take (Kaggle's 12 h session limit)") in line
    assert "FORCE=1 (--force)" in line
    assert not fake_kaggle.called("SaveKernel")


def test_push_with_force_skips_the_quota(env, fake_kaggle, unplanned):
    fake_kaggle.script("GetAcceleratorQuotaStatistics", (200, fake_kaggle.quota(used_h=25)))
    out = kit(env, "push", unplanned, "--force")
    assert out.returncode == 0, out.stderr
    assert fake_kaggle.called("SaveKernel") and not fake_kaggle.called("GetAcceleratorQuotaStatistics")


def test_push_fits_a_small_time_budget(env, fake_kaggle, write_toml):
    config = write_toml("", base=True, sizes=False)
    config.write_text(config.read_text().replace("[params]\n", "[params]\ntime_budget_s = 7200\n", 1))
    fake_kaggle.script("GetAcceleratorQuotaStatistics", (200, fake_kaggle.quota(used_h=27)))
    out = kit(env, "push", str(config))
    assert out.returncode == 0, out.stderr  # 3 h left, 2 h planned
    assert fake_kaggle.called("GetAcceleratorQuotaStatistics") and fake_kaggle.called("SaveKernel")


def test_push_when_the_quota_cannot_be_read_warns_and_pushes(env, fake_kaggle, unplanned):
    fake_kaggle.script("GetAcceleratorQuotaStatistics", (404, {"code": 404, "message": "Not found"}))
    out = kit(env, "push", unplanned)
    assert out.returncode == 0, out.stderr
    warnings = [line for line in out.stderr.splitlines() if line.startswith("warning: GPU quota unknown")]
    assert len(warnings) == 1 and "HTTP 404" in warnings[0] and "pushing anyway" in warnings[0]
    assert fake_kaggle.called("SaveKernel")


def test_push_inference_is_held_to_the_9h_limit_of_a_rerun(env, fake_kaggle, pair):
    fake_kaggle.script("GetAcceleratorQuotaStatistics", (200, fake_kaggle.quota(used_h=20)))  # 10 h left
    out = kit(env, "push", pair, "--inference")
    assert out.returncode == 0, out.stderr  # 10 h left cover the 8.75 h of a rerun, not the 11.75 h of a session
    assert fake_kaggle.called("SaveKernel")[0].body["slug"] == INFERENCE
    fake_kaggle.script("GetAcceleratorQuotaStatistics", (200, fake_kaggle.quota(used_h=22)))  # 8 h left
    line = error_line(kit(env, "push", pair, "--inference"))
    assert f"push {INFERENCE}: 8.0 GPU hours left" in line
    assert "fewer than the 8.8 h its run may take (a code competition's 9 h limit)" in line


# -- errors: one line each, for every new verb --------------------------------------------------------------------

VERBS = {  # verb -> (CLI arguments, the API method the failure is scripted on)
    "submit": (("submit", "dog-breed", "-v", "1"), "CreateCodeSubmission"),
    "submissions": (("submissions", "dog-breed"), "ListSubmissions"),
    "quota": (("quota",), "GetAcceleratorQuotaStatistics"),
}
ERRORS = {  # case -> (scripted answers, what the line says, per verb where it differs)
    "401": ([(401, {"code": 401, "message": f"Unauthorized: bad key {KEY}"})],
            {"*": "Kaggle rejected the credentials (HTTP 401); create a new API token"}),
    "403": ([(403, {"code": 403, "message": "You must accept this competition's rules before you can submit"})],
            {"submit": "accept the competition's rules", "submissions": "accept the competition's rules",
             "quota": "check the API token"}),
    "404": ([(404, {"code": 404, "message": "Not found"})],
            {"submit": "push it first: make push COMP=dog-breed", "submissions": "no competition 'dog-breed-identification'",
             "quota": "does not report the quota"}),
    "429": ([(429, {"code": 429, "message": "Too many requests"})] * 5,
            {"*": "Kaggle is rate-limiting (HTTP 429) after 5 tries"}),
    "500": ([(500, {"code": 500, "message": "Internal error"})] * 5,
            {"*": "Kaggle's server failed (HTTP 500) 5 times; retry later"}),
}


@pytest.mark.parametrize("case", list(ERRORS))
@pytest.mark.parametrize("verb", list(VERBS))
def test_failures_are_one_line(env, fake_kaggle, verb, case):
    args, method = VERBS[verb]
    script, expected = ERRORS[case]
    fake_kaggle.script(method, *script)
    line = error_line(kit(env, *args))
    assert expected.get(verb, expected.get("*")) in line, line
    assert len(fake_kaggle.called(method)) == len(script)  # retried only what is worth retrying


@pytest.mark.parametrize("verb", list(VERBS))
def test_rate_limit_then_success(env, fake_kaggle, verb):
    args, method = VERBS[verb]
    fake_kaggle.script(method, (429, {"code": 429, "message": "slow down"}))
    out = kit(env, *args)
    assert out.returncode == 0, out.stderr
    assert "HTTP 429, retrying" in out.stderr and len(fake_kaggle.called(method)) == 2


def test_submit_answer_without_a_submission_is_one_line(env, fake_kaggle):
    reason = "Submission not allowed: your team has used its daily submission allowance (5) today"
    fake_kaggle.script("CreateCodeSubmission", (200, {"message": reason, "ref": 0}))
    line = error_line(kit(env, "submit", "dog-breed", "-v", "1"))
    assert line == f"error: submit {TRAINING} v1 to dog-breed-identification: Kaggle refused it: {reason}"


def test_submit_of_an_unpushed_kernel(env, fake_kaggle, pair):
    fake_kaggle.script("GetKernel", (404, {"code": 404, "message": "Not found"}))
    line = error_line(kit(env, "submit", pair))
    assert "push it first: make push COMP=" in line and "INFER=1" in line
    assert not fake_kaggle.called("CreateCodeSubmission")


def test_submit_succeeds_when_its_status_cannot_be_read(env, fake_kaggle):
    fake_kaggle.script("ListSubmissions", *[(503, {"code": 503, "message": "Unavailable"})] * 5)
    out = kit(env, "submit", "dog-breed", "-v", "1")
    assert out.returncode == 0, out.stderr
    assert "warning: submitted, but its status could not be read" in out.stderr
    assert f"submitted {TRAINING} version 1" in out.stdout and len(fake_kaggle.submissions) == 1
