"""Loading the models (loading.py), the crash probe that first loads them in a child process
(crash_probe.py), and the measurement of this machine's costs (calibrate.py)."""
