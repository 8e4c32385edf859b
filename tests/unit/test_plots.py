"""The curves: a GPU panel and gpu_monitor.csv only where the monitor sampled a GPU, and a log that says so."""
import toys

from kit.run import plot_history
from kit.run.folds import CVResult
from kit.runtime.monitor import Monitor

HISTORY = [{"epoch": e, "train_loss": 1.0 / e, "val_loss": 1.2 / e, "log_loss": 1.2 / e} for e in (1, 2)]


def plot(tmp_path, capsys, monitor):
    session = toys.session(tmp_path)
    session.output_dir.mkdir(parents=True)
    cv = CVResult(metric="log_loss", folds=[{"fold": 0, "history": HISTORY, "best_epoch": 2, "best_score": 0.6}], monitor=monitor)
    fig = plot_history(session, cv)
    return session.output_dir, fig, capsys.readouterr().out


def test_on_the_cpu_no_gpu_panel_and_no_csv_and_the_log_says_so(tmp_path, capsys):
    out, fig, log = plot(tmp_path, capsys, Monitor("cpu"))
    assert [ax.get_title() for ax in fig.axes] == ["loss", "validation log_loss (dot: best epoch)"]
    assert (out / "history.png").is_file() and not (out / "gpu_monitor.csv").exists()
    assert log == f"saved {out / 'history.png'} (no GPU utilisation panel and no gpu_monitor.csv: training ran on the CPU)\n"


def test_gpu_samples_give_a_panel_and_a_csv(tmp_path, capsys):
    monitor = Monitor("cuda", samples=[(100.0, 50.0, 2e9, 70.0), (101.0, 90.0, 3e9, None)])
    out, fig, log = plot(tmp_path, capsys, monitor)
    assert [ax.get_title() for ax in fig.axes][2] == "GPU utilisation"
    assert (out / "gpu_monitor.csv").read_text().splitlines() == [
        "time,util_percent,memory_used_bytes,power_w", "100.0,50.0,2000000000.0,70.0", "101.0,90.0,3000000000.0,"]
    assert log == f"saved {out / 'history.png'} and {out / 'gpu_monitor.csv'}\n"


def test_memory_samples_without_utilisation_still_give_the_csv(tmp_path, capsys):
    out, fig, log = plot(tmp_path, capsys, Monitor("cuda", samples=[(100.0, None, 2e9, None)]))
    assert len(fig.axes) == 2 and (out / "gpu_monitor.csv").is_file()
