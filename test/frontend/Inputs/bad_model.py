"""A model using an op the importer does not translate (cumsum)."""
import torch
import torch.nn as nn


class CumsumNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.cumsum(self.fc(x), dim=-1)
