"""The shared pipeline and its memory heads."""

from mlm.models.heads import HeadOutput, IdentityHead, MemoryHead
from mlm.models.language_model import LanguageModel, LMOutput
from mlm.models.lstm_cell import ManualLSTM, lstm_cell_step

__all__ = ["LanguageModel", "LMOutput", "MemoryHead", "IdentityHead", "HeadOutput", "ManualLSTM", "lstm_cell_step"]
