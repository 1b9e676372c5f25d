"""Loader.pairs (python/src/loader_binding.cpp) as the iterable of (images,
labels) that training frameworks take. Skipped where the framework is not
installed."""
import pytest
import torch
from torch import nn
from torch.nn import functional as F

import imgpack

lightning = pytest.importorskip("lightning")


def test_lightning_trainer_fits_on_the_pairs(dataset_dir):
    class Model(lightning.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Flatten(), nn.Linear(20 * 24 * 3, 4))
            self.seen = 0

        def training_step(self, batch, index):
            images, labels = batch
            self.seen += images.shape[0]
            return F.cross_entropy(self.net(images.float() / 255), labels.long())

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01)

    loader = imgpack.Loader(dataset_dir, batch_size=16)
    model = Model()
    trainer = lightning.Trainer(max_epochs=3, accelerator="cpu", logger=False,
                                enable_checkpointing=False, enable_progress_bar=False,
                                enable_model_summary=False)
    trainer.fit(model, train_dataloaders=loader.pairs(torch.from_dlpack))
    assert trainer.global_step == 3 * len(loader)
    assert model.seen == 3 * 60
    assert loader.epoch == 2  # one loader epoch per trainer epoch
