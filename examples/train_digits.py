"""Train a small CNN on the 8x8 handwritten digits that ship with scikit-learn (1797 images, no download), with a
jitted training step, and report test accuracy.  uv run python examples/train_digits.py  (DEV=PYTHON runs it on the
interpreter: use --subset and --steps to keep it short). --devices 2 trains data-parallel: the weights on two devices
(DEV:0 and DEV:1), each batch split between them, the gradients summed by an allreduce."""
import argparse, sys, time
import numpy as np
from sklearn.datasets import load_digits
from tg.tensor import Tensor, Device, nn
from tg.tensor.nn.optim import Adam
from tg.tensor.nn.state import get_parameters
from tg.tensor.jit import TinyJit

class Net:
  def __init__(self, width: int = 8):
    self.c1, self.c2 = nn.Conv2d(1, width, 3, padding=1), nn.Conv2d(width, 2 * width, 3, padding=1)
    self.fc = nn.Linear(2 * width * 4 * 4, 10)
  def __call__(self, x: Tensor) -> Tensor:
    x = self.c1(x).relu()
    x = self.c2(x).relu().max_pool2d(2)
    return self.fc(x.flatten(1))

def bar(i: int, n: int, text: str) -> None:
  done = 30 * i // n
  sys.stdout.write(f"\r[{'#' * done}{'.' * (30 - done)}] {i}/{n} {text}")
  sys.stdout.flush()

def main() -> float:
  ap = argparse.ArgumentParser(description=__doc__)
  ap.add_argument("--steps", type=int, default=400)
  ap.add_argument("--batch", type=int, default=32)
  ap.add_argument("--lr", type=float, default=1e-2)
  ap.add_argument("--width", type=int, default=8, help="channels of the first convolution (the second has twice as many)")
  ap.add_argument("--subset", type=int, default=0, help="use only this many training and test images")
  ap.add_argument("--devices", type=int, default=1, help="data-parallel over this many devices of the DEV kind")
  args = ap.parse_args()
  digits = load_digits()
  X, Y = (digits.images / 16.0).astype(np.float32).reshape(-1, 1, 8, 8), digits.target.astype(np.int32)
  perm = np.random.default_rng(0).permutation(len(X))
  X, Y = X[perm], Y[perm]
  n_test = 360
  X_train, Y_train, X_test, Y_test = X[n_test:], Y[n_test:], X[:n_test], Y[:n_test]
  if args.subset: X_train, Y_train, X_test, Y_test = X_train[:args.subset], Y_train[:args.subset], X_test[:args.subset], Y_test[:args.subset]
  Tensor.manual_seed(0)
  model = Net(args.width)
  devs = tuple(f"{Device.DEFAULT.partition(':')[0]}:{i}" for i in range(args.devices)) if args.devices > 1 else None
  if devs:
    for p in get_parameters(model): p.to_(devs)
  def put(a: np.ndarray) -> Tensor: return Tensor(a).shard(devs, axis=0) if devs else Tensor(a)
  opt = Adam(get_parameters(model), lr=args.lr)

  @TinyJit
  def train_step(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    with Tensor.train():
      opt.zero_grad()
      out = model(x)
      loss = out.sparse_categorical_crossentropy(y)
      loss.backward()
      opt.step()
      return loss, (out.argmax(-1) == y).mean()

  @TinyJit
  def predict(x: Tensor) -> Tensor: return model(x).argmax(-1)

  rng, start = np.random.default_rng(1), time.perf_counter()
  batch = min(args.batch, len(X_train))
  for i in range(1, args.steps + 1):
    idx = rng.integers(0, len(X_train), batch)
    loss, acc = train_step(put(X_train[idx]), put(Y_train[idx]))
    if i % 10 == 0 or i == args.steps: bar(i, args.steps, f"loss {loss.item():.3f} acc {acc.item():.2f}")
  chunks = [predict(put(X_test[j:j + batch])).numpy() for j in range(0, len(X_test) - batch + 1, batch)]
  rest = len(X_test) % batch
  if rest: chunks.append(model(put(X_test[-rest:])).argmax(-1).numpy())
  test_acc = float((np.concatenate(chunks) == Y_test).mean())
  print(f"\ntest accuracy {test_acc * 100:.1f}% on {len(X_test)} images after {args.steps} steps in {time.perf_counter() - start:.1f} s "
        f"on {', '.join(devs) if devs else Device.DEFAULT}")
  return test_acc

if __name__ == "__main__": main()
