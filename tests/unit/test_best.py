"""Which validation pass is the better (kit.train.best): the metric first, the validation loss on a tie."""
from kit.train import best


def test_the_verdict_reads_the_metric_first_and_the_loss_only_on_a_tie():
    judged = best.Judged
    assert best.verdict("accuracy", judged(0.9, 0.5), None) == "metric"
    assert best.verdict("accuracy", judged(float("nan"), 0.1), None) == ""
    assert best.verdict("accuracy", judged(0.9, 0.5), judged(0.8, 0.1)) == "metric"  # a better score at a worse loss
    assert best.verdict("accuracy", judged(0.8, 0.1), judged(0.9, 0.5)) == ""
    assert best.verdict("accuracy", judged(0.9, 0.4), judged(0.9, 0.5)) == "loss"
    assert best.verdict("accuracy", judged(0.1 + 0.2, 0.4), judged(0.3, 0.5)) == "loss"  # equal, summed otherwise
    assert best.verdict("accuracy", judged(0.9, 0.5), judged(0.9, 0.5)) == ""
    assert best.verdict("mae", judged(1.0, 0.5), judged(1.1, 0.1)) == "metric"  # lower is better
    assert best.verdict("mae", judged(1.0, float("nan")), judged(1.0, 0.5)) == ""
