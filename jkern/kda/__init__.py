"""The kernel-based deep architecture: a Nyström layer and an MLP (Croce et al., ACL 2017)."""

from ._model import KDA as KDA
from ._train import adam as adam
from ._train import default_data_key as default_data_key
from ._train import epoch_batches as epoch_batches
from ._train import fit as fit
from ._train import fit_grid as fit_grid
from ._train import grid_member as grid_member
from ._train import init_grid as init_grid
from ._train import init_opt_state as init_opt_state
from ._train import loss_fn as loss_fn
from ._train import train_step as train_step
