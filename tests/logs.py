"""What a test reads in a run's kit.log, and what it shows when a line is missing: a GPU run's log is not kept
once the test has failed, so its assertion message carries the lines that matter."""

# the set-up and epoch lines the GPU tests read
SAID = ("precision ", "channels_last ", "preflight:", "batch_size auto:", " epoch ", "WARNING")


def said(log: str, needles: tuple[str, ...] = SAID) -> str:
    """The lines of `log` holding any of `needles`."""
    return "\n".join(line for line in log.splitlines() if any(n in line for n in needles))
