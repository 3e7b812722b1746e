# Where the embedded models' training recipe (tok.py, model.py) and tokenizer live: models/ of the shared
# folder beside the repository (../shared/models), or DRAFTLINE_SHARED_MODELS. Importing this puts the
# recipe on the import path.
import os, sys
SHARED_MODELS = os.environ.get('DRAFTLINE_SHARED_MODELS') or os.path.normpath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'shared', 'models'))
RECIPE = os.path.join(SHARED_MODELS, 'recipe')
TOKENIZER = os.path.join(SHARED_MODELS, 'tokenizer.json')
if RECIPE not in sys.path: sys.path.insert(0, RECIPE)
