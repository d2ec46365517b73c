"""models.MLP without models.py's cross-entropy loss: the CLI's --loss mse
applies. (Data parallel cross-entropy is not partitioned yet: nll_loss reads
linalg.index of the class loop while the batch loop is sharded, which
spmd-partition rejects for any sharded loop.)"""
from models import MLP  # noqa: F401
