"""The main example runs end to end on the PYTHON interpreter, on a small subset and a narrow model (the interpreter is slow;
the full run on the CPU is README's first command)."""
import os, pathlib, subprocess, sys

ROOT = pathlib.Path(__file__).resolve().parents[2]

def test_train_digits_on_the_python_device():
  env = {**os.environ, "DEV": "PYTHON"}
  r = subprocess.run([sys.executable, str(ROOT / "examples" / "train_digits.py"), "--steps", "2", "--batch", "2", "--subset", "4", "--width", "2"],
                     capture_output=True, text=True, env=env, timeout=240)
  assert r.returncode == 0, r.stderr[-3000:]
  assert "2/2 loss" in r.stdout and "test accuracy" in r.stdout and "on 4 images" in r.stdout and "on PYTHON" in r.stdout, r.stdout

def test_train_digits_data_parallel_on_two_cpu_devices():
  r = subprocess.run([sys.executable, str(ROOT / "examples" / "train_digits.py"), "--steps", "2", "--batch", "4", "--subset", "6", "--width", "2",
                      "--devices", "2"], capture_output=True, text=True, env={**os.environ, "DEV": "CPU"}, timeout=240)
  assert r.returncode == 0, r.stderr[-3000:]
  assert "2/2 loss" in r.stdout and "on 6 images" in r.stdout and "on CPU:0, CPU:1" in r.stdout, r.stdout
