"""A model using an op the importer does not translate (cummax)."""
import torch
import torch.nn as nn


class CummaxNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.cummax(self.fc(x), dim=-1).values
