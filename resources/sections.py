"""The config file's client sections, declared once here; each pipeline declares its own sections in its
``settings.py`` (``CONFIG_SECTIONS``), and the config loader puts them together."""

from resources.blob_store import BlobStoreResource
from resources.clip_embedder import ClipEmbedderResource
from resources.executor_settings import ExecutorSettings
from resources.http_fetcher import HttpFetcherResource
from resources.image_editing import ImageEditorResource, ImageGeneratorsResource
from resources.model_providers import ModelProvidersResource
from resources.ocr import OcrResource
from resources.reddit_archive_api import RedditArchiveApiResource
from resources.reddit_live_api import RedditApiResource
from resources.warehouse import WarehouseResource

CONFIG_SECTIONS: dict[str, tuple[str, type]] = {
    # config section: (Dagster resource key, class whose fields are the section's keys)
    "warehouse": ("warehouse", WarehouseResource),
    "blob_store": ("blob_store", BlobStoreResource),
    "fetch": ("http_fetcher", HttpFetcherResource),
    "clip": ("clip", ClipEmbedderResource),
    "reddit_archive_api": ("reddit_archive_api", RedditArchiveApiResource),
    "reddit_api": ("reddit_api", RedditApiResource),
    "models": ("model_providers", ModelProvidersResource),
    "image_editor": ("image_editor", ImageEditorResource),
    "image_generators": ("image_generators", ImageGeneratorsResource),
    "ocr": ("ocr", OcrResource),
    "executor": ("executor", ExecutorSettings),
}
