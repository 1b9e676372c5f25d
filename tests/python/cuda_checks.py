"""The pieces of test_cuda.py's checks that are not CUDA's: test_cuda.py runs
them against device loaders, test_cuda_host.py against host loaders, so that
their host half is tested on every machine, with or without a device."""
import numpy as np
import torch

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)

# The selection and order test_cuda.py compares host and device batches on.
COMPARED = dict(split="cv3", fold=1, role="train", batch_size=7, seed=3)


def epoch_tensors(loader):
    """One epoch of `loader`: (images, labels, records, images' device) per
    batch, images, labels and records as host copies that own their memory.

    Nothing kept views a slot of the loader's ring, so an epoch of any number
    of batches is read whatever `prefetch` is. (images.cpu() would not do: of
    a host batch it is the batch's own view, which holds the slot.)"""
    out = []
    for batch in loader:
        images = torch.from_dlpack(batch.images)
        out.append((images.to("cpu", copy=True), torch.from_dlpack(batch.labels).clone(),
                    np.asarray(batch.records).copy(), images.device))
    return out


def normalized(stored, output, mean=MEAN, std=STD):
    """The images a loader delivers for `output` from the stored uint8 [N, H,
    W, C] images, by the reader's arithmetic: (x - 255 * mean) * (1 / (255 *
    std)) in float32, no FMA, N, C, H, W; rounded to float16 for float16."""
    if output == "uint8":
        return stored
    offset = np.array([np.float32(255.0 * np.float64(np.float32(m))) for m in mean], np.float32)
    scale = np.array([np.float32(1.0 / (255.0 * np.float64(np.float32(s)))) for s in std],
                     np.float32)
    out = ((stored.astype(np.float32) - offset) * scale).transpose(0, 3, 1, 2)
    return out.astype(np.float16) if output == "float16" else out
