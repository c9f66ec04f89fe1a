# The digits MLP's data, model and training recipe, shared by export_models.py (the dense model of
# the fixtures) and finetune_24.py (its 2:4-pruned copy fine-tuned the same way), so that both
# train with the same split, epochs, optimizer and batches. Needs Debian's python3-torch and
# python3-sklearn; the importer reports a missing module.
import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn

SEED = 37
EPOCHS = 20
LEARNING_RATE = 1e-2  # Adam
BATCH_SIZE = 64
TEST_FRACTION = 0.25  # of scikit-learn's 1,797 digits, stratified: 450 test digits


def seed_everything():
    torch.manual_seed(SEED)
    np.random.seed(SEED)


def load_split():
    """(x_train, x_test, y_train, y_test): pixels scaled to [0, 1] as float32, labels int64."""
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)  # pixel values are 0..16
    y = digits.target.astype(np.int64)
    return train_test_split(x, y, test_size=TEST_FRACTION, random_state=SEED, stratify=y)


def make_mlp():
    return nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))


def train(model, x_train, y_train, after_step=None):
    """EPOCHS epochs of Adam on seeded shuffled batches; after_step() runs after each step."""
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    loss_fn = nn.CrossEntropyLoss()
    xt, yt = torch.from_numpy(x_train), torch.from_numpy(y_train)
    generator = torch.Generator().manual_seed(SEED)
    for _ in range(EPOCHS):
        order = torch.randperm(len(xt), generator=generator)
        for start in range(0, len(xt), BATCH_SIZE):
            batch = order[start:start + BATCH_SIZE]
            optimizer.zero_grad()
            loss_fn(model(xt[batch]), yt[batch]).backward()
            optimizer.step()
            if after_step is not None:
                after_step()
    model.eval()
    return model


def top1(model, x, y):
    """Top-1 accuracy of MODEL on numpy inputs X against labels Y."""
    with torch.no_grad():
        predicted = model(torch.from_numpy(x)).argmax(1).numpy()
    return float((predicted == y).mean())
