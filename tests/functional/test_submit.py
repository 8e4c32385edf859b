"""quota and push's GPU-quota guard, through the official kaggle client against the fake Kaggle API (the
real CLI in a subprocess, as in test_push)."""
import pytest
import test_push
from test_push import INFERENCE, KEY, error_line, kit

env = test_push.env  # the same fixtures: credentials and the client pointed at the fake, fast retries
pair = test_push.pair  # dog-breed with an [inference] table, whose inference kernel is the one submitted


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

def test_push_refused_when_the_gpu_hours_left_are_fewer_than_the_budget(env, fake_kaggle):
    fake_kaggle.script("GetAcceleratorQuotaStatistics", (200, fake_kaggle.quota(used_h=25)))
    line = error_line(kit(env, "push", "dog-breed"))
    assert ("5.0 GPU hours left this week (it refreshes 2026-11-28 00:00 UTC), fewer than the 11.8 h its run may "
            "take (Kaggle's 12 h session limit)") in line
    assert "FORCE=1 (--force)" in line
    assert not fake_kaggle.called("SaveKernel")


def test_push_with_force_skips_the_quota(env, fake_kaggle):
    fake_kaggle.script("GetAcceleratorQuotaStatistics", (200, fake_kaggle.quota(used_h=25)))
    out = kit(env, "push", "dog-breed", "--force")
    assert out.returncode == 0, out.stderr
    assert fake_kaggle.called("SaveKernel") and not fake_kaggle.called("GetAcceleratorQuotaStatistics")


def test_push_fits_a_small_time_budget(env, fake_kaggle, write_toml):
    config = write_toml("", base=True)
    config.write_text(config.read_text().replace("[params]\n", "[params]\ntime_budget_s = 7200\n", 1))
    fake_kaggle.script("GetAcceleratorQuotaStatistics", (200, fake_kaggle.quota(used_h=27)))
    out = kit(env, "push", str(config))
    assert out.returncode == 0, out.stderr  # 3 h left, 2 h planned
    assert fake_kaggle.called("GetAcceleratorQuotaStatistics") and fake_kaggle.called("SaveKernel")


def test_push_when_the_quota_cannot_be_read_warns_and_pushes(env, fake_kaggle):
    fake_kaggle.script("GetAcceleratorQuotaStatistics", (404, {"code": 404, "message": "Not found"}))
    out = kit(env, "push", "dog-breed")
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
    assert f"push {INFERENCE}: 8.0 GPU hours left" in line and "fewer than the 8.8 h its run may take (a code competition's 9 h limit)" in line


# -- errors: one line each, for every new verb --------------------------------------------------------------------

VERBS = {  # verb -> (CLI arguments, the API method the failure is scripted on)
    "quota": (("quota",), "GetAcceleratorQuotaStatistics"),
}
ERRORS = {  # case -> (scripted answers, what the line says, per verb where it differs)
    "401": ([(401, {"code": 401, "message": f"Unauthorized: bad key {KEY}"})],
            {"*": "Kaggle rejected the credentials (HTTP 401); create a new API token"}),
    "403": ([(403, {"code": 403, "message": "You must accept this competition's rules before you can submit"})],
            {"quota": "check the API token"}),
    "404": ([(404, {"code": 404, "message": "Not found"})],
            {"quota": "does not report the quota"}),
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
